/* HTML escaping (html.h). */
#include "util/html.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void repro_html_text(FILE *f, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
                fprintf(f, "\\x%02x", *p);
            else
                fputc(*p, f);
        }
    }
}

void repro_html_printf(FILE *f, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    repro_html_text(f, buf);
}

/* Copies the tag text [p, end) without its xmlns="..." / xmlns:x="..."
 * attributes. */
static void tag_without_xmlns(FILE *f, const char *p, const char *end)
{
    while (p < end) {
        if (p[0] == ' ' && !strncmp(p + 1, "xmlns", 5)) {
            const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
            const char *close = q ? memchr(q + 1, '"', (size_t)(end - q - 1)) : NULL;
            if (close) {
                p = close + 1;
                continue;
            }
        }
        fputc(*p++, f);
    }
}

void repro_html_svg(FILE *f, const char *svg)
{
    const char *start = svg ? strstr(svg, "<svg") : NULL;
    const char *end = start ? strchr(start, '>') : NULL;
    if (!end) {
        repro_html_text(f, svg);
        return;
    }
    tag_without_xmlns(f, start, end + 1);
    fputs(end + 1, f);
}
