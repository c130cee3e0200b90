/* Byte-level text data: a plain file, or the King James Bible as Debian's
 * bible-kjv-text ships it, split into training and validation text, and windows drawn
 * from them deterministically. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "vpipe/data.h"

#define KJV_PATH "/usr/lib/bible.data"

struct vp_data {
    uint8_t *bytes;
    size_t n, n_train; /* bytes [0, n_train) train, [n_train, n) validation */
    uint64_t digest;   /* vp_data_digest */
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

/* Makes room for `more` bytes after the first n of *buf (capacity *cap), doubling;
 * false when out of memory. */
static bool reserve(uint8_t **buf, size_t *cap, size_t n, size_t more) {
    if (n + more <= *cap)
        return true;
    size_t want = *cap ? *cap : 1 << 16;
    while (want < n + more)
        want *= 2;
    uint8_t *grown = realloc(*buf, want);
    if (!grown)
        return false;
    *buf = grown;
    *cap = want;
    return true;
}

/* What a BRS header says. */
typedef struct brs_header {
    uint32_t wsize, nwin; /* window size, window count */
    size_t table_end;     /* end of the window offset table */
    int maxbits;          /* maximum LZW code width */
    bool block;           /* block mode: code 256 clears the table */
} brs_header;

/* Reads and checks a BRS header into *h; VP_EIO naming what is wrong. */
static vp_status read_brs_header(const uint8_t *f, size_t size, const char *name, brs_header *h,
                                 vp_error *err) {
    if (size < 0x60)
        return vp__fail(err, VP_EIO, "%s: truncated Bible data header", name);
    h->wsize = be32(f + 0x54);
    h->nwin = be32(f + 0x58);
    h->table_end = 0x5c + 4 * ((size_t)h->nwin + 1);
    if (h->wsize == 0 || h->wsize > (1u << 24) || h->nwin == 0 || h->nwin > (1u << 16) ||
        h->table_end + 3 > size || f[h->table_end] != 0x1f || f[h->table_end + 1] != 0x9d)
        return vp__fail(err, VP_EIO, "%s: unrecognised Bible data header", name);
    h->maxbits = f[h->table_end + 2] & 0x1f;
    h->block = f[h->table_end + 2] & 0x80;
    if (h->maxbits < 9 || h->maxbits > 16)
        return vp__fail(err, VP_EIO, "%s: unsupported code width %d", name, h->maxbits);
    return VP_OK;
}

/* Decodes a BRS file image into *text (grown as the windows decode, at most
 * VP_DATA_MAX bytes); VP_EIO if it is not one, is corrupt or decodes to more. */
static vp_status brs_decode(const uint8_t *f, size_t size, const char *name, uint8_t **text,
                            size_t *len, vp_error *err) {
    brs_header h = {0};
    vp_status st = read_brs_header(f, size, name, &h, err);
    lzw_tables *z = st ? NULL : malloc(sizeof *z);
    uint8_t *out = NULL;
    size_t n = 0, cap = 0;
    if (!st && !z)
        st = vp__fail(err, VP_ENOMEM, "out of memory decoding %s", name);
    for (uint32_t w = 0; !st && w < h.nwin; w++) {
        size_t a = be32(f + 0x5c + 4 * (size_t)w), b = be32(f + 0x60 + 4 * (size_t)w);
        if (!reserve(&out, &cap, n, h.wsize)) {
            st = vp__fail(err, VP_ENOMEM, "out of memory decoding %s", name);
            break;
        }
        long got = a < h.table_end + 3 || b < a || b > size
                       ? -1
                       : lzw_window(z, f + a, b - a, h.maxbits, h.block, out + n, h.wsize);
        if (got < 0)
            st = vp__fail(err, VP_EIO, "%s: window %u of the Bible data is corrupt", name, w);
        else if ((n += (size_t)got) > VP_DATA_MAX)
            st = vp__fail(err, VP_EIO, "%s: decodes to more than %zu bytes", name, VP_DATA_MAX);
    }
    free(z);
    if (st) {
        free(out);
        return st;
    }
    *text = out;
    *len = n;
    return VP_OK;
}

/* ---- loading ---- */

/* The corpus of the n bytes at buf, which it takes over (freed on failure). */
static vp_status from_bytes(uint8_t *buf, size_t n, const char *name, double val_fraction,
                            vp_data **out, vp_error *err) {
    if (n >= 4 && !memcmp(buf, "EC02", 4)) {
        uint8_t *text = NULL;
        vp_status st = brs_decode(buf, n, name, &text, &n, err);
        free(buf);
        if (st)
            return st;
        buf = text;
    }
    if (n == 0) {
        free(buf);
        return vp__fail(err, VP_EIO, "data file %s is empty", name);
    }
    vp_data *d = malloc(sizeof *d);
    if (!d) {
        free(buf);
        return vp__fail(err, VP_ENOMEM, "out of memory loading %s", name);
    }
    d->bytes = buf;
    d->n = n;
    d->n_train = n - (size_t)((double)n * val_fraction);
    uint8_t split[8];
    for (int i = 0; i < 8; i++)
        split[i] = (uint8_t)((uint64_t)d->n_train >> (8 * i));
    d->digest = vp__fnv1a(split, sizeof split, vp__fnv1a(buf, n, 0xcbf29ce484222325ULL));
    *out = d;
    return VP_OK;
}

static vp_status check_fraction(double val_fraction, vp_error *err) {
    if (!(val_fraction > 0.0 && val_fraction < 1.0))
        return vp__fail(err, VP_EINVAL, "validation fraction must be in (0, 1)");
    return VP_OK;
}

vp_status vp_data_parse(const void *bytes, size_t len, const char *name, double val_fraction,
                        vp_data **out, vp_error *err) {
    *out = NULL;
    vp_status st = check_fraction(val_fraction, err);
    if (st)
        return st;
    if (len > VP_DATA_MAX)
        return vp__fail(err, VP_EIO, "data %s is larger than %zu bytes", name, VP_DATA_MAX);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return vp__fail(err, VP_ENOMEM, "out of memory loading %s", name);
    memcpy(copy, bytes, len);
    return from_bytes(copy, len, name, val_fraction, out, err);
}

vp_status vp_data_load(const char *path, double val_fraction, vp_data **out, vp_error *err) {
    *out = NULL;
    vp_status st = check_fraction(val_fraction, err);
    if (st)
        return st;
    char *text = NULL;
    size_t n = 0;
    vp_error why = {0};
    if (vp_read_file(path, VP_DATA_MAX, &text, &n, &why) != VP_OK)
        return vp__fail(err, why.status, "cannot read data file %s", why.message);
    return from_bytes((uint8_t *)text, n, path, val_fraction, out, err);
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

uint64_t vp_data_digest(const vp_data *data) {
    return data->digest;
}

vp_status vp_data_batch(const vp_data *data, bool validation, uint64_t seed, uint64_t index,
                        const vp_batch *batch, vp_error *err) {
    const uint8_t *base = data->bytes + (validation ? data->n_train : 0);
    size_t n = validation ? data->n - data->n_train : data->n_train, T = (size_t)batch->seq_len;
    if (batch->seq_len < 1 || n < T + 1)
        return vp__fail(
            err, VP_EIO, "sequence length %d needs %d bytes of %s text, the data has %zu",
            batch->seq_len, batch->seq_len + 1, validation ? "validation" : "training", n);
    uint64_t key = validation ? 0x76616c6964ULL : seed;
    for (int r = 0; r < batch->rows; r++) {
        uint64_t state = vp__rng_key(key, index, (uint64_t)r);
        size_t start = (size_t)(vp__rng_next(&state) % (n - T));
        memcpy(batch->tokens + (size_t)r * T, base + start, T);
        memcpy(batch->targets + (size_t)r * T, base + start + 1, T);
    }
    return VP_OK;
}
