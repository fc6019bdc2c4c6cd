/* llama2c.c - llama2.c's tokenizer.bin (written by its tokenizer.py export):
 *
 *   uint32 max_token_length
 *   per piece, vocab_size times: float32 score, int32 length, the bytes
 *
 * little-endian, no count (the model's config has it), no types. The export
 * writes each "▁" as a plain space and BOS/EOS as "\n<s>\n", "\n</s>\n";
 * ids 0, 1, 2 are unknown, BOS, EOS. Loading turns the spaces back into
 * "▁" (so encoding sees the same pieces as SentencePiece's) and infers the
 * types: <0xHH> pieces are bytes, the rest normal. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (char)(v >> (8 * i));
}

/* Bytes of piece s[0..n) with every c0 (c0len bytes) replaced by c1. */
static size_t replace_len(const char *s, size_t n, const char *c0, size_t c0len, size_t c1len)
{
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= c0len && memcmp(s + i, c0, c0len) == 0) {
            out += c1len;
            i += c0len;
        } else {
            out++;
            i++;
        }
    }
    return out;
}

static size_t replace(char *dst, const char *s, size_t n, const char *c0, size_t c0len,
                      const char *c1, size_t c1len)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= c0len && memcmp(s + i, c0, c0len) == 0) {
            memcpy(dst + o, c1, c1len);
            o += c1len;
            i += c0len;
        } else {
            dst[o++] = s[i++];
        }
    }
    return o;
}

/* Checks the layout of piece i at d[*pos..size) and steps over it. */
static int check_piece(const char *path, const unsigned char *d, size_t size, size_t i,
                       uint32_t max_len, size_t *pos)
{
    size_t p = *pos;
    if (size - p < 8)
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: truncated at byte %zu (score and "
                            "length need 8 bytes, %zu left)", path, i, p, size - p);
    uint32_t bits = get_u32(d + p), len = get_u32(d + p + 4);
    float score;
    memcpy(&score, &bits, sizeof score);
    if (isnan(score))
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: score is NaN (byte %zu)", path, i, p);
    if (len > INT32_MAX)
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: negative length %ld (byte %zu)", path,
                            i, (long)(int32_t)len, p + 4);
    if (len == 0)
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: length 0 (byte %zu)", path, i, p + 4);
    if (len > max_len)
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: length %lu exceeds the file's "
                            "max_token_length %lu", path, i, (unsigned long)len,
                            (unsigned long)max_len);
    p += 8;
    if (size - p < len)
        return synor__error(SYNOR_EPARSE, "%s: piece %zu: truncated: length %lu, %zu bytes left",
                            path, i, (unsigned long)len, size - p);
    *pos = p + len;
    return 0;
}

int synor__tokenizer_parse_llama2c(const char *path, const void *data, size_t size,
                                   size_t vocab_size, synor_tokenizer **out)
{
    const unsigned char *d = data;
    if (vocab_size < 3 || vocab_size > INT32_MAX)
        return synor__error(SYNOR_EINVAL, "%s: vocab_size %zu: tokenizer.bin has unknown, BOS "
                            "and EOS at ids 0, 1, 2, and ids are int32: 3 to 2^31 - 1 pieces",
                            path, vocab_size);
    if (size < 4)
        return synor__error(SYNOR_EPARSE, "%s: truncated: %zu bytes, no max_token_length", path,
                            size);
    uint32_t max_len = get_u32(d);
    if (max_len > INT32_MAX)
        return synor__error(SYNOR_EPARSE, "%s: max_token_length %lu is negative as run.c reads "
                            "it (int)", path, (unsigned long)max_len);
    /* The layout first, so a wrong file costs no allocation of vocab_size
     * entries and its message names the piece. */
    size_t pos = 4;
    int rc;
    for (size_t i = 0; i < vocab_size; i++)
        if ((rc = check_piece(path, d, size, i, max_len, &pos)))
            return rc;
    if (pos != size)
        return synor__error(SYNOR_EPARSE, "%s: %zu bytes after piece %zu, the last of vocab_size "
                            "%zu (is vocab_size right?)", path, size - pos, vocab_size - 1,
                            vocab_size);
    const char **pieces = synor__malloc(vocab_size * sizeof *pieces);
    size_t *lens = synor__malloc(vocab_size * sizeof *lens);
    float *scores = synor__malloc(vocab_size * sizeof *scores);
    /* a piece grows at most 3x (a space becomes "▁") */
    char *blob = synor__malloc(3 * size);
    if (!pieces || !lens || !scores || !blob) {
        rc = synor__error(SYNOR_ENOMEM, "%s: out of memory (%zu pieces)", path, vocab_size);
        goto out;
    }
    pos = 4;
    size_t o = 0;
    for (size_t i = 0; i < vocab_size; i++) {
        uint32_t bits = get_u32(d + pos), len = get_u32(d + pos + 4);
        memcpy(&scores[i], &bits, sizeof bits);
        pos += 8;
        pieces[i] = blob + o;
        lens[i] = replace(blob + o, (const char *)d + pos, len, " ", 1, SYNOR__TOK_SPACE,
                          SYNOR__TOK_SPACE_LEN);
        o += lens[i];
        pos += len;
    }
    synor_tokenizer_spec spec = {vocab_size, pieces, lens, scores, NULL, 1, 2, 0, 1};
    rc = synor__tokenizer_build(&spec, path, SYNOR_EPARSE, out);
out:
    synor__free(pieces);
    synor__free(lens);
    synor__free(scores);
    synor__free(blob);
    return rc;
}

int synor_tokenizer_load_llama2c(const char *path, size_t vocab_size, synor_tokenizer **out)
{
    if (!path || !out)
        return synor__error(SYNOR_EINVAL, "tokenizer: no path or no output pointer");
    char *data = NULL;
    size_t size = 0;
    int rc = synor__read_file(path, &data, &size);
    if (rc)
        return rc;
    rc = synor__tokenizer_parse_llama2c(path, data, size, vocab_size, out);
    synor__free(data);
    return rc;
}

int synor__tokenizer_serialize_llama2c(const synor_tokenizer *tok, const char *path,
                                       char **data, size_t *size)
{
    if (tok->unk != 0 || tok->bos != 1 || tok->eos != 2)
        return synor__error(SYNOR_EINVAL, "%s: tokenizer.bin fixes unknown, BOS, EOS at ids 0, "
                            "1, 2; this vocabulary has %ld, %ld, %ld", path, (long)tok->unk,
                            (long)tok->bos, (long)tok->eos);
    size_t total = 4, max_len = 0;
    for (size_t i = 0; i < tok->n; i++) {
        size_t len = replace_len(tok->blob + tok->off[i], tok->off[i + 1] - tok->off[i],
                                 SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN, 1);
        if (len > max_len)
            max_len = len;
        total += 8 + len;
    }
    if (max_len > INT32_MAX)
        return synor__error(SYNOR_EINVAL, "%s: a piece of %zu bytes does not fit tokenizer.bin",
                            path, max_len);
    char *buf = synor__malloc(total);
    if (!buf)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory (%zu bytes)", path, total);
    put_u32(buf, (uint32_t)max_len);
    size_t o = 4;
    for (size_t i = 0; i < tok->n; i++) {
        uint32_t bits;
        memcpy(&bits, &tok->scores[i], sizeof bits);
        put_u32(buf + o, bits);
        size_t len = replace(buf + o + 8, tok->blob + tok->off[i], tok->off[i + 1] - tok->off[i],
                             SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN, " ", 1);
        put_u32(buf + o + 4, (uint32_t)len);
        o += 8 + len;
    }
    *data = buf;
    *size = total;
    return 0;
}

int synor_tokenizer_save_llama2c(const synor_tokenizer *tok, const char *path)
{
    if (!tok || !path)
        return synor__error(SYNOR_EINVAL, "tokenizer: no tokenizer or no path");
    char *buf = NULL;
    size_t size = 0;
    int rc = synor__tokenizer_serialize_llama2c(tok, path, &buf, &size);
    if (rc)
        return rc;
    rc = synor__write_file_atomic(path, buf, size);
    synor__free(buf);
    return rc;
}
