/* Writing HTML by hand, safely: every string that did not come from a
 * literal in our code (an experiment name, a tensor name, a commit
 * subject, a program's stderr, an environment field) goes through
 * repro_html_text, so no such text can open a tag, close an attribute or
 * start a script. Used by `repro check --report` (golden/html_report.h). */
#ifndef REPRO_HTML_H
#define REPRO_HTML_H

#include <stdio.h>

/* Writes s (NULL: nothing) escaped for HTML text and for a quoted
 * attribute value: & < > " ' as character references; control characters
 * other than newline and tab (which HTML does not allow) as the visible
 * text \xNN. Other bytes, UTF-8 included, pass through. */
void repro_html_text(FILE *f, const char *s);

/* printf into a bounded buffer, then repro_html_text. For formatted text
 * that carries someone else's strings. */
void repro_html_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes an SVG document as an element of an HTML page: the XML
 * declaration, any DOCTYPE and comments before the <svg> tag, and the
 * xmlns attributes (the HTML parser supplies the SVG namespace) are left
 * out; the rest is copied as it is, so svg must come from repro's own
 * renderers. Text that does not start an <svg> element is written as
 * escaped text instead. */
void repro_html_svg(FILE *f, const char *svg);

#endif
