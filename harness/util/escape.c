/* Escaping untrusted text for the terminal (see escape.h). */
#include "util/escape.h"

#include <stdio.h>
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
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[5];
        size_t n;
        if (plain(*p)) {
            piece[0] = (char)*p;
            n = 1;
        } else if (*p == '\\') {
            piece[0] = piece[1] = '\\';
            n = 2;
        } else {
            piece[0] = '\\';
            piece[1] = 'x';
            piece[2] = hex[*p >> 4];
            piece[3] = hex[*p & 15];
            n = 4;
        }
        /* Room for this piece and, if more follows, for "..." after it. */
        size_t reserve = p[1] ? 3 : 0;
        if (o + n + reserve >= len) {
            if (len >= 4) { /* cut: "..." in place of what does not fit */
                while (o + 3 >= len)
                    o--;
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(buf + o, piece, n);
        o += n;
    }
    buf[o < len ? o : len - 1] = '\0';
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
