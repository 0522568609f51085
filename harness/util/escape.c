/* Escaping untrusted text for the terminal (see escape.h). */
#include "util/escape.h"

#include <stdio.h>
#include <string.h>

static int plain(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e && c != '\\';
}

static const char hex[] = "0123456789abcdef";

/* How one piece of the text is written: the bytes to write into piece (at
 * most 4), their count returned, and how many bytes of the text they
 * stand for in *take. */
typedef size_t (*piece_fn)(const unsigned char *p, char piece[4], size_t *take);

static size_t hex_piece(unsigned char c, char piece[4])
{
    piece[0] = '\\';
    piece[1] = 'x';
    piece[2] = hex[c >> 4];
    piece[3] = hex[c & 15];
    return 4;
}

/* One line: printable ASCII as is, a backslash doubled, anything else \xHH. */
static size_t one_line_piece(const unsigned char *p, char piece[4], size_t *take)
{
    *take = 1;
    if (plain(*p)) {
        piece[0] = (char)*p;
        return 1;
    }
    if (*p == '\\') {
        piece[0] = piece[1] = '\\';
        return 2;
    }
    return hex_piece(*p, piece);
}

/* The text escaped piece by piece into buf; cut with "..." at a piece
 * boundary when it does not fit. */
static char *escape_with(char *buf, size_t len, const char *s, piece_fn next_piece)
{
    if (!len)
        return buf;
    if (!s)
        s = "(null)";
    /* o: bytes written; cut: the last whole-piece boundary that leaves room
     * for "..." and the NUL, where the text is cut if the rest does not fit. */
    size_t o = 0, cut = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char piece[4];
        size_t take;
        size_t n = next_piece(p, piece, &take);
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
        p += take;
        if (o + 3 < len)
            cut = o;
    }
    buf[o] = '\0';
    return buf;
}

char *repro_escape(char *buf, size_t len, const char *s)
{
    return escape_with(buf, len, s, one_line_piece);
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

/* Lines: printable ASCII, newline and tab as is, well-formed UTF-8 text
 * as is, anything else \xHH. */
static size_t lines_piece(const unsigned char *p, char piece[4], size_t *take)
{
    *take = 1;
    if ((*p >= 0x20 && *p <= 0x7e) || *p == '\n' || *p == '\t') {
        piece[0] = (char)*p;
        return 1;
    }
    size_t n = *p >= 0x80 ? utf8_text(p) : 0;
    if (n) {
        memcpy(piece, p, n);
        *take = n;
        return n;
    }
    return hex_piece(*p, piece);
}

char *repro_escape_lines(char *buf, size_t len, const char *s)
{
    return escape_with(buf, len, s, lines_piece);
}

const char *repro_esc_lines(const char *s)
{
    static _Thread_local char ring[REPRO_ESC_RING][REPRO_ESC_BUF];
    static _Thread_local unsigned next;
    char *buf = ring[next++ % REPRO_ESC_RING];
    return repro_escape_lines(buf, REPRO_ESC_BUF, s);
}

/* Single quotes keep every byte but the quote itself, which is closed,
 * escaped and reopened. */
void repro_shell_word_append(char *buf, size_t len, const char *word)
{
    size_t used = strlen(buf);
    int plain = word[0] != '\0';
    for (const char *p = word; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%",
                       *p) != NULL;
    if (used && used + 1 < len)
        buf[used++] = ' ', buf[used] = '\0';
    if (plain) {
        snprintf(buf + used, len - used, "%s", word);
        return;
    }
    size_t k = used;
    if (k + 1 < len)
        buf[k++] = '\'';
    for (const char *p = word; *p && k + 5 < len; p++) {
        if (*p == '\'') {
            memcpy(buf + k, "'\\''", 4);
            k += 4;
        } else {
            buf[k++] = *p;
        }
    }
    if (k + 1 < len)
        buf[k++] = '\'';
    buf[k] = '\0';
}
