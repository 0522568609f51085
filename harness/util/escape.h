/* Text from someone else (a bundle's manifest, a claimed or golden trace, a
 * config quoted in an error, a child's stderr) made safe to print on a
 * terminal. Such text can hold ESC sequences that clear the screen, move
 * the cursor or retitle the window — enough to print a fake verdict line
 * over the real one — and newlines that start a fake line of their own.
 *
 * The escaped form keeps printable ASCII (0x20..0x7e) except the backslash,
 * which is doubled (so the form reads back unambiguously), and writes every
 * other byte — control characters, DEL, and every byte of a multi-byte
 * UTF-8 character — as \xNN. Output that does not fit its buffer is cut and
 * ends in "...". Every report that prints such text calls this first. */
#ifndef REPRO_ESCAPE_H
#define REPRO_ESCAPE_H

#include <stddef.h>

/* Escapes s (NULL reads as "(null)") into buf, always NUL-terminated when
 * len > 0; returns buf. */
char *repro_escape(char *buf, size_t len, const char *s);

/* Bytes of one repro_esc buffer (its output: up to this minus one). */
#define REPRO_ESC_BUF 2048

/* The escaped s in one of REPRO_ESC_RING rotating thread-local buffers,
 * for printf arguments: valid until REPRO_ESC_RING more calls on this
 * thread, so at most that many in one printf. */
#define REPRO_ESC_RING 8
const char *repro_esc(const char *s);

/* 1 when s needs no escaping (repro_esc would return it unchanged). */
int repro_escape_is_plain(const char *s);

/* The same for text that is made of lines (a program's stderr, a message
 * that quotes one): newline and tab are kept, and so are the backslash and
 * well-formed UTF-8 characters; every other control character (ESC, CR,
 * DEL, the C1 controls) and every byte of malformed UTF-8 is \xNN. What
 * prints can then start new lines, but never move the cursor or rewrite
 * one: callers indent quoted lines so they cannot pass for repro's own. */
char *repro_escape_lines(char *buf, size_t len, const char *s);
const char *repro_esc_lines(const char *s);

/* Appends a space (unless buf is empty) and word to buf, single-quoted
 * when it holds anything but the characters a shell passes through as
 * they are: a command printed for the user to run runs as printed. Cut
 * when buf is full. */
void repro_shell_word_append(char *buf, size_t len, const char *word);

#endif
