/* PNG decoding for screenshot tests (tu_png.h). */
#include "tu_png.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undoes each row's filter in place (row: 1 filter byte + stride bytes). */
static int unfilter(unsigned char *raw, long h, long stride, int bpp)
{
    unsigned char *prev = NULL;
    for (long y = 0; y < h; y++) {
        unsigned char *row = raw + y * (stride + 1), *px = row + 1;
        int type = row[0];
        for (long i = 0; i < stride; i++) {
            int a = i >= bpp ? px[i - bpp] : 0, b = prev ? prev[i] : 0;
            int c = prev && i >= bpp ? prev[i - bpp] : 0;
            switch (type) {
            case 0: break;
            case 1: px[i] = (unsigned char)(px[i] + a); break;
            case 2: px[i] = (unsigned char)(px[i] + b); break;
            case 3: px[i] = (unsigned char)(px[i] + (a + b) / 2); break;
            case 4: px[i] = (unsigned char)(px[i] + paeth(a, b, c)); break;
            default: return -1;
            }
        }
        prev = px;
    }
    return 0;
}

/* The file's bytes (malloc'd), or NULL. */
static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = *len > 0 ? malloc((size_t)*len) : NULL;
    if (buf && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static void count(const unsigned char *raw, long w, long h, int bpp, const unsigned *colors,
                  int ncolors, tu_png_count *out)
{
    for (long y = 0; y < h; y++)
        for (long x = 0; x < w; x++) {
            const unsigned char *p = raw + y * (w * bpp + 1) + 1 + x * bpp;
            out->non_white += p[0] < 240 || p[1] < 240 || p[2] < 240;
            for (int k = 0; k < ncolors && k < 4; k++) {
                int r = (int)(colors[k] >> 16) & 255, g = (int)(colors[k] >> 8) & 255,
                    b = (int)colors[k] & 255;
                out->near[k] += abs(p[0] - r) <= 6 && abs(p[1] - g) <= 6 && abs(p[2] - b) <= 6;
            }
        }
}

int tu_png_count_pixels(const char *path, const unsigned *colors, int ncolors, tu_png_count *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long len = 0;
    unsigned char *png = slurp(path, &len), *idat = NULL, *raw = NULL;
    size_t nidat = 0;
    int rc = -1, bpp = 0;
    if (!png || len < 33 || memcmp(png, "\x89PNG\r\n\x1a\n", 8)) {
        snprintf(err, errlen, "%s: not a PNG file", path);
        goto done;
    }
    idat = malloc((size_t)len);
    for (long off = 8; idat && off + 12 <= len;) {
        uint32_t n = be32(png + off);
        const unsigned char *type = png + off + 4, *data = png + off + 8;
        if (off + 12 + (long)n > len)
            break;
        if (!memcmp(type, "IHDR", 4)) {
            out->width = be32(data);
            out->height = be32(data + 4);
            bpp = data[9] == 6 ? 4 : data[9] == 2 ? 3 : 0;
            if (data[8] != 8 || data[12] != 0)
                bpp = 0;
        } else if (!memcmp(type, "IDAT", 4)) {
            memcpy(idat + nidat, data, n);
            nidat += n;
        }
        off += 12 + (long)n;
    }
    if (!bpp || out->width <= 0 || out->height <= 0) {
        snprintf(err, errlen, "%s: not an 8-bit RGB(A) non-interlaced PNG", path);
        goto done;
    }
    uLongf rawlen = (uLongf)(out->height * (out->width * bpp + 1));
    raw = malloc(rawlen);
    if (!raw || uncompress(raw, &rawlen, idat, nidat) != Z_OK ||
        rawlen != (uLongf)(out->height * (out->width * bpp + 1)) ||
        unfilter(raw, out->height, out->width * bpp, bpp)) {
        snprintf(err, errlen, "%s: its image data does not decode", path);
        goto done;
    }
    out->pixels = out->width * out->height;
    count(raw, out->width, out->height, bpp, colors, ncolors, out);
    rc = 0;
done:
    free(raw);
    free(idat);
    free(png);
    return rc;
}
