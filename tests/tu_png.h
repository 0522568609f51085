/* Just enough of PNG to look at a screenshot: 8-bit RGB or RGBA,
 * non-interlaced (what headless chromium writes), decoded with zlib. */
#ifndef TU_PNG_H
#define TU_PNG_H

#include <stddef.h>

typedef struct {
    long width, height;
    long pixels;     /* width x height */
    long non_white;  /* pixels with any channel below 240 */
    long near[4];    /* pixels within 6 per channel of each colour asked for */
} tu_png_count;

/* Decodes the file at path and counts its pixels: all that are not white,
 * and those near each of the ncolors colours (0xRRGGBB, at most 4).
 * 0, or -1 with why in err. */
int tu_png_count_pixels(const char *path, const unsigned *colors, int ncolors, tu_png_count *out,
                        char *err, size_t errlen);

#endif
