/* Escaping untrusted text for the terminal (see escape.h). */
#include "util/escape.h"

#include <string.h>

static int plain(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e && c != '\\';
}

char *repro_escape(char *buf, size_t len, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!len)
        return buf;
    if (!s)
        s = "(null)";
    /* o: bytes written; cut: the last whole-piece boundary that leaves room
     * for "..." and the NUL, where the text is cut if the rest does not fit. */
    size_t o = 0, cut = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[4];
        size_t n = 0;
        if (plain(*p)) {
            piece[n++] = (char)*p;
        } else if (*p == '\\') {
            piece[n++] = '\\';
            piece[n++] = '\\';
        } else {
            piece[n++] = '\\';
            piece[n++] = 'x';
            piece[n++] = hex[*p >> 4];
            piece[n++] = hex[*p & 15];
        }
        if (o + n >= len) { /* does not fit: cut at the last boundary */
            o = cut;
            if (len >= 4) {
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(buf + o, piece, n);
        o += n;
        if (o + 3 < len)
            cut = o;
    }
    buf[o] = '\0';
    return buf;
}

const char *repro_esc(const char *s)
{
    static _Thread_local char ring[REPRO_ESC_RING][REPRO_ESC_BUF];
    static _Thread_local unsigned next;
    char *buf = ring[next++ % REPRO_ESC_RING];
    return repro_escape(buf, REPRO_ESC_BUF, s);
}

int repro_escape_is_plain(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (!plain(*p))
            return 0;
    return 1;
}

/* The length of the well-formed UTF-8 sequence at p that is not a C1
 * control (U+0080..U+009F, which terminals obey as ESC sequences), or 0. */
static size_t utf8_text(const unsigned char *p)
{
    size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (p[0] >= 0xf5 || n == 0)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (p[0] == 0xc2 && p[1] <= 0x9f)
        return 0;
    return n;
}

char *repro_escape_lines(char *buf, size_t len, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!len)
        return buf;
    if (!s)
        s = "(null)";
    size_t o = 0, cut = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char piece[4];
        size_t n = 0, take = 1;
        if ((*p >= 0x20 && *p <= 0x7e) || *p == '\n' || *p == '\t') {
            piece[n++] = (char)*p;
        } else if (*p >= 0x80 && (take = utf8_text(p)) > 0) {
            memcpy(piece, p, take);
            n = take;
        } else {
            take = 1;
            piece[n++] = '\\';
            piece[n++] = 'x';
            piece[n++] = hex[*p >> 4];
            piece[n++] = hex[*p & 15];
        }
        if (o + n >= len) {
            o = cut;
            if (len >= 4) {
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(buf + o, piece, n);
        o += n;
        p += take;
        if (o + 3 < len)
            cut = o;
    }
    buf[o] = '\0';
    return buf;
}

const char *repro_esc_lines(const char *s)
{
    static _Thread_local char ring[REPRO_ESC_RING][REPRO_ESC_BUF];
    static _Thread_local unsigned next;
    char *buf = ring[next++ % REPRO_ESC_RING];
    return repro_escape_lines(buf, REPRO_ESC_BUF, s);
}
