/* Byte-level text data: a plain file, or the King James Bible as Debian's
 * bible-kjv-text ships it, split into training and validation text, and windows drawn
 * from them deterministically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "vpipe/data.h"

#define KJV_PATH "/usr/lib/bible.data"

struct vp_data {
    uint8_t *bytes;
    size_t n, n_train; /* bytes [0, n_train) train, [n_train, n) validation */
};

const char *vp_data_default_path(void) {
    return access(KJV_PATH, R_OK) == 0 ? KJV_PATH : NULL;
}

/* ---- Bible Retrieval System data files ----
 * Layout (big-endian u32): "EC02..." magic, window size at 0x54, window count n at 0x58,
 * n+1 file offsets from 0x5c (the last is the end), then a compress(1) header (1f 9d,
 * flags: maximum code width | 0x80 block mode) and n windows. Each window is an
 * independent LZW code stream as compress(1) writes it: codes LSB first, 9 bits wide
 * growing to the maximum, with compress's padding to a whole group of codes whenever the
 * width changes; code 256 clears the table in block mode. */

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct {
    uint16_t prefix[1 << 16];
    uint8_t suffix[1 << 16];
    uint8_t stack[1 << 16];
} lzw_tables;

/* Decodes one window into out (capacity cap); returns its length or -1 if corrupt. */
static long lzw_window(lzw_tables *z, const uint8_t *in, size_t n, int maxbits, bool block,
                       uint8_t *out, size_t cap) {
    size_t bit = 0, group = 0, total = n * 8, len = 0;
    int nbits = 9, old = -1, fin = 0;
    long maxcode = (1L << nbits) - 1, next = block ? 257 : 256, limit = 1L << maxbits;
    while (bit + (size_t)nbits <= total) {
        size_t byte = bit >> 3;
        uint32_t word = 0;
        for (int i = 0; i < 3 && byte + (size_t)i < n; i++)
            word |= (uint32_t)in[byte + (size_t)i] << (8 * i);
        int code = (int)((word >> (bit & 7)) & ((1u << nbits) - 1));
        bit += (size_t)nbits;
        if (code == 256 && block) {
            size_t g = (size_t)nbits * 8;
            bit = group + (bit - group + g - 1) / g * g;
            group = bit;
            nbits = 9;
            maxcode = (1L << nbits) - 1;
            next = 256;
            old = -1;
            continue;
        }
        if (old == -1) {
            if (code > 255 || len >= cap)
                return -1;
            out[len++] = (uint8_t)code;
            old = fin = code;
            next = next == 256 ? 257 : next;
            continue;
        }
        int c = code, sp = 0;
        if (c > next || (c == next && next >= limit))
            return -1;
        if (c == next) { /* the KwKwK case */
            z->stack[sp++] = (uint8_t)fin;
            c = old;
        }
        while (c >= 256) {
            z->stack[sp++] = z->suffix[c];
            c = z->prefix[c];
        }
        fin = c;
        z->stack[sp++] = (uint8_t)c;
        if (len + (size_t)sp > cap)
            return -1;
        while (sp > 0)
            out[len++] = z->stack[--sp];
        if (next < limit) {
            z->prefix[next] = (uint16_t)old;
            z->suffix[next] = (uint8_t)fin;
            next++;
        }
        old = code;
        if (next > maxcode && nbits < maxbits) {
            size_t g = (size_t)nbits * 8;
            bit = group + (bit - group + g - 1) / g * g;
            group = bit;
            nbits++;
            maxcode = (1L << nbits) - 1;
        }
    }
    return (long)len;
}

/* Decodes a BRS file image into *text; VP_EIO if it is not one or is corrupt. */
static vp_status brs_decode(const uint8_t *f, size_t size, const char *path, uint8_t **text,
                            size_t *len, vp_error *err) {
    if (size < 0x60)
        return vp__fail(err, VP_EIO, "%s: truncated Bible data header", path);
    uint32_t wsize = be32(f + 0x54), nwin = be32(f + 0x58);
    size_t table_end = 0x5c + 4 * ((size_t)nwin + 1);
    if (wsize == 0 || wsize > (1u << 24) || nwin == 0 || nwin > (1u << 16) ||
        table_end + 3 > size || f[table_end] != 0x1f || f[table_end + 1] != 0x9d)
        return vp__fail(err, VP_EIO, "%s: unrecognised Bible data header", path);
    int maxbits = f[table_end + 2] & 0x1f;
    bool block = f[table_end + 2] & 0x80;
    if (maxbits < 9 || maxbits > 16)
        return vp__fail(err, VP_EIO, "%s: unsupported code width %d", path, maxbits);
    uint8_t *out = malloc((size_t)wsize * nwin);
    lzw_tables *z = malloc(sizeof *z);
    if (!out || !z) {
        free(out);
        free(z);
        return vp__fail(err, VP_ENOMEM, "out of memory decoding %s", path);
    }
    size_t n = 0;
    for (uint32_t w = 0; w < nwin; w++) {
        size_t a = be32(f + 0x5c + 4 * (size_t)w), b = be32(f + 0x60 + 4 * (size_t)w);
        long got = a < table_end + 3 || b < a || b > size
                       ? -1
                       : lzw_window(z, f + a, b - a, maxbits, block, out + n, wsize);
        if (got < 0) {
            free(out);
            free(z);
            return vp__fail(err, VP_EIO, "%s: window %u of the Bible data is corrupt", path, w);
        }
        n += (size_t)got;
    }
    free(z);
    *text = out;
    *len = n;
    return VP_OK;
}

/* ---- loading ---- */

static vp_status read_file(const char *path, uint8_t **buf, size_t *len, vp_error *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return vp__fail(err, VP_EIO, "cannot read data file %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, fp);
        if (n < cap)
            break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb)
            free(b);
        b = nb;
        cap *= 2;
    }
    int e = errno;
    vp_status st = !b ? VP_ENOMEM : ferror(fp) ? VP_EIO : VP_OK;
    fclose(fp);
    if (st) {
        free(b);
        return vp__fail(err, st, "cannot read data file %s: %s", path, strerror(e));
    }
    *buf = b;
    *len = n;
    return VP_OK;
}

vp_status vp_data_load(const char *path, double val_fraction, vp_data **out, vp_error *err) {
    *out = NULL;
    if (!(val_fraction > 0.0 && val_fraction < 1.0))
        return vp__fail(err, VP_EINVAL, "validation fraction must be in (0, 1)");
    uint8_t *buf = NULL;
    size_t n = 0;
    vp_status st = read_file(path, &buf, &n, err);
    if (st)
        return st;
    if (n >= 4 && !memcmp(buf, "EC02", 4)) {
        uint8_t *text = NULL;
        st = brs_decode(buf, n, path, &text, &n, err);
        free(buf);
        if (st)
            return st;
        buf = text;
    }
    if (n == 0) {
        free(buf);
        return vp__fail(err, VP_EIO, "data file %s is empty", path);
    }
    vp_data *d = malloc(sizeof *d);
    if (!d) {
        free(buf);
        return vp__fail(err, VP_ENOMEM, "out of memory loading %s", path);
    }
    d->bytes = buf;
    d->n = n;
    d->n_train = n - (size_t)((double)n * val_fraction);
    *out = d;
    return VP_OK;
}

void vp_data_free(vp_data *data) {
    if (!data)
        return;
    free(data->bytes);
    free(data);
}

size_t vp_data_train_bytes(const vp_data *data) {
    return data->n_train;
}

size_t vp_data_val_bytes(const vp_data *data) {
    return data->n - data->n_train;
}

vp_status vp_data_batch(const vp_data *data, bool validation, uint64_t seed, uint64_t index,
                        int rows, int seq_len, uint8_t *tokens, uint8_t *targets, vp_error *err) {
    const uint8_t *base = data->bytes + (validation ? data->n_train : 0);
    size_t n = validation ? data->n - data->n_train : data->n_train, T = (size_t)seq_len;
    if (seq_len < 1 || n < T + 1)
        return vp__fail(err, VP_EIO,
                        "sequence length %d needs %d bytes of %s text, the data has %zu", seq_len,
                        seq_len + 1, validation ? "validation" : "training", n);
    uint64_t key = validation ? 0x76616c6964ULL : seed;
    for (int r = 0; r < rows; r++) {
        uint64_t state = vp__rng_key(key, index, (uint64_t)r);
        size_t start = (size_t)(vp__rng_next(&state) % (n - T));
        memcpy(tokens + (size_t)r * T, base + start, T);
        memcpy(targets + (size_t)r * T, base + start + 1, T);
    }
    return VP_OK;
}
