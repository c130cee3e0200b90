/* Freeing what the library returned, checked allocation, growth, a digest, the clock, a
 * median, a number reader and the nearest name to a typo. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"

void vp_free(void *p) {
    free(p);
}

void *vp__calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *vp__malloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    return malloc(n && size ? n * size : 1);
}

uint64_t vp__fnv1a(const void *bytes, size_t n, uint64_t hash) {
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        hash ^= p[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

double vp__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int vp__grow(void **buf, int *cap, int need, size_t elem) {
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > INT32_MAX / 2)
            return -1;
        ncap *= 2;
    }
    void *nb = realloc(*buf, (size_t)ncap * elem);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = ncap;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vp__median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const char *vp__read_number(const char *text, double *v) {
    if (!isdigit((unsigned char)text[0]) && !(text[0] == '.' && isdigit((unsigned char)text[1])))
        return NULL;
    char *end = NULL;
    *v = strtod(text, &end); /* an ERANGE is an underflow (kept) or HUGE_VAL (refused later) */
    for (const char *c = text; c < end; c++)
        if (!isdigit((unsigned char)*c) && !strchr(".eE+-", *c))
            return NULL; /* "0x1p3" */
    return end;
}

int vp_typo_edits(const char *word, size_t len, const char *name) {
    size_t n = strlen(name);
    if (len > 63 || n > 63)
        return -1;
    /* d[i][j]: the edits from word's first i bytes to name's first j */
    int d[64][64];
    for (size_t i = 0; i <= len; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= n; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= len; i++)
        for (size_t j = 1; j <= n; j++) {
            int best = d[i - 1][j - 1] + (word[i - 1] != name[j - 1]);
            best = d[i - 1][j] + 1 < best ? d[i - 1][j] + 1 : best;
            best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
            if (i > 1 && j > 1 && word[i - 1] == name[j - 2] && word[i - 2] == name[j - 1])
                best = d[i - 2][j - 2] + 1 < best ? d[i - 2][j - 2] + 1 : best;
            d[i][j] = best;
        }
    return d[len][n] <= (n <= 4 ? 1 : 2) ? d[len][n] : -1;
}

void vp__nearest_offer(vp__nearest *n, const char *name) {
    if (!name || !n->word)
        return;
    size_t len = strlen(n->word);
    /* a name the word begins (h200 of h200-141gb) beats every typo */
    int e = len >= 2 && !strncmp(name, n->word, len) ? 0 : vp_typo_edits(n->word, len, name);
    if (e >= 0 && (!n->best || e < n->edits)) {
        n->best = name;
        n->edits = e;
    }
}

vp__hint vp__did_you_mean(const char *best, const char *tail) {
    vp__hint h = {""};
    if (best || tail)
        snprintf(h.text, sizeof h.text, " (%s%s%s%s)", best ? "did you mean '" : "",
                 best ? best : "", best ? (tail ? "'? " : "'?") : "", tail ? tail : "");
    return h;
}
