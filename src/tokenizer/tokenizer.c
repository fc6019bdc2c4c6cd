/* tokenizer.c - a vocabulary: its pieces, the map from bytes to piece id,
 * validation when it is built, accessors, and decoding. Encoding is in
 * encode.c, llama2.c's file format in llama2c.c, training in train.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* ------------------------------------------------------------ helpers */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

void synor__tokmap_free(synor__tokmap *m)
{
    synor__free(m->slots);
    memset(m, 0, sizeof *m);
}

int32_t synor__tokmap_find(const synor__tokmap *m, const char *blob, const size_t *off,
                           const char *s, size_t n)
{
    if (!m->slots)
        return -1;
    for (size_t i = (size_t)hash_bytes(s, n) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t v = m->slots[i];
        if (!v)
            return -1;
        size_t id = v - 1, len = off[id + 1] - off[id];
        if (len == n && (n == 0 || memcmp(blob + off[id], s, n) == 0))
            return (int32_t)id;
    }
}

static void tokmap_put(uint32_t *slots, size_t mask, const char *blob, const size_t *off,
                       uint32_t id)
{
    size_t i = (size_t)hash_bytes(blob + off[id], off[id + 1] - off[id]) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = id + 1;
}

int synor__tokmap_add(synor__tokmap *m, const char *blob, const size_t *off, uint32_t id)
{
    /* at most half full, so probes stay short */
    if (!m->slots || (m->count + 1) * 2 > m->mask + 1) {
        size_t size = m->slots ? (m->mask + 1) * 2 : 64;
        uint32_t *slots = synor__calloc(size, sizeof *slots);
        if (!slots)
            return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory (piece map)");
        for (size_t i = 0; m->slots && i <= m->mask; i++)
            if (m->slots[i])
                tokmap_put(slots, size - 1, blob, off, m->slots[i] - 1);
        synor__free(m->slots);
        m->slots = slots;
        m->mask = size - 1;
    }
    tokmap_put(m->slots, m->mask, blob, off, id);
    m->count++;
    return 0;
}

size_t synor__utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4;
    else
        return 0; /* continuation byte, C0/C1 (overlong), F5..FF */
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xf0 && s[1] < 0x90) || /* overlong */
        (c == 0xed && s[1] > 0x9f) ||                              /* surrogate */
        (c == 0xf4 && s[1] > 0x8f))                                /* > U+10FFFF */
        return 0;
    return len;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int synor__tok_byte_piece(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void synor__tok_quote(const char *s, size_t n, char *buf, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            o += (size_t)snprintf(buf + o, size - o, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    buf[o < size ? o : size - 1] = '\0';
}

/* ------------------------------------------------------------- build */

void synor_tokenizer_destroy(synor_tokenizer *tok)
{
    if (!tok)
        return;
    synor__tokmap_free(&tok->map);
    synor__free(tok->blob);
    synor__free(tok->off);
    synor__free(tok->scores);
    synor__free(tok->types);
    synor__free(tok->special);
    synor__free(tok);
}

/* tok's control and user-defined pieces, longest first (ties: the
 * smaller id). */
static int special_list(synor_tokenizer *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->types[i] == SYNOR_TOKEN_CONTROL || t->types[i] == SYNOR_TOKEN_USER_DEFINED;
    if (!n)
        return 0;
    if (!(t->special = synor__malloc(n * sizeof *t->special)))
        return synor__error(SYNOR_ENOMEM, "tokenizer: out of memory");
    for (size_t i = 0; i < t->n; i++) {
        if (t->types[i] != SYNOR_TOKEN_CONTROL && t->types[i] != SYNOR_TOKEN_USER_DEFINED)
            continue;
        size_t len = t->off[i + 1] - t->off[i], j = t->nspecial++;
        for (; j > 0 && t->off[t->special[j - 1] + 1] - t->off[t->special[j - 1]] < len; j--)
            t->special[j] = t->special[j - 1];
        t->special[j] = (int32_t)i;
    }
    return 0;
}

int synor__tokenizer_build(const synor_tokenizer_spec *spec, const char *where, int code,
                           synor_tokenizer **out)
{
    char q[200];
    if (!out)
        return synor__error(SYNOR_EINVAL, "%s: no output pointer", where);
    if (!spec || spec->n == 0)
        return synor__error(code, "%s: empty vocabulary", where);
    size_t n = spec->n;
    if (n > INT32_MAX)
        return synor__error(code, "%s: %zu pieces, more than ids can number (2^31 - 1)", where, n);
    if (!spec->pieces || !spec->lens)
        return synor__error(SYNOR_EINVAL, "%s: no pieces or no lengths given", where);
    const int32_t special[3] = {spec->bos, spec->eos, spec->unk};
    static const char *const special_name[3] = {"BOS", "EOS", "unknown"};
    for (int k = 0; k < 3; k++)
        if (special[k] < -1 || (special[k] >= 0 && (size_t)special[k] >= n))
            return synor__error(code, "%s: %s id %ld out of range (vocabulary of %zu pieces)",
                                where, special_name[k], (long)special[k], n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (spec->lens[i] == 0)
            return synor__error(code, "%s: piece %zu is empty", where, i);
        if (!spec->pieces[i])
            return synor__error(SYNOR_EINVAL, "%s: piece %zu is NULL", where, i);
        if (spec->lens[i] > SIZE_MAX / 2 - total)
            return synor__error(code, "%s: piece %zu: pieces too long", where, i);
        total += spec->lens[i];
    }

    synor_tokenizer *t = synor__calloc(1, sizeof *t);
    if (!t)
        return synor__error(SYNOR_ENOMEM, "%s: out of memory", where);
    t->n = n;
    t->bos = spec->bos;
    t->eos = spec->eos;
    t->unk = spec->unk;
    t->add_space_prefix = spec->add_space_prefix != 0;
    t->blob = synor__malloc(total);
    t->off = synor__malloc((n + 1) * sizeof *t->off);
    t->scores = synor__malloc(n * sizeof *t->scores);
    t->types = synor__malloc(n * sizeof *t->types);
    int rc = 0;
    if (!t->blob || !t->off || !t->scores || !t->types) {
        rc = synor__error(SYNOR_ENOMEM, "%s: out of memory (%zu pieces)", where, n);
        goto fail;
    }
    for (int b = 0; b < 256; b++)
        t->byte_id[b] = -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = spec->lens[i];
        const char *p = spec->pieces[i];
        synor__tok_quote(p, len, q, sizeof q);
        memcpy(t->blob + o, p, len);
        t->off[i] = o;
        o += len;
        t->off[i + 1] = o;
        if (len > t->max_len)
            t->max_len = len;
        float score = spec->scores ? spec->scores[i] : 0.0f;
        if (isnan(score)) {
            rc = synor__error(code, "%s: piece %zu (\"%s\"): score is NaN", where, i, q);
            goto fail;
        }
        t->scores[i] = score;
        int byte = synor__tok_byte_piece(p, len);
        int32_t type;
        if (spec->types)
            type = spec->types[i];
        else if ((int32_t)i == spec->unk)
            type = SYNOR_TOKEN_UNKNOWN;
        else if ((int32_t)i == spec->bos || (int32_t)i == spec->eos)
            type = SYNOR_TOKEN_CONTROL;
        else
            type = byte >= 0 ? SYNOR_TOKEN_BYTE : SYNOR_TOKEN_NORMAL;
        if (type < SYNOR_TOKEN_NORMAL || type > SYNOR_TOKEN_BYTE) {
            rc = synor__error(code, "%s: piece %zu (\"%s\"): type %ld is not 1..6", where, i, q,
                              (long)type);
            goto fail;
        }
        t->types[i] = type;
        if (type == SYNOR_TOKEN_BYTE) {
            if (byte < 0) {
                rc = synor__error(code, "%s: piece %zu (\"%s\"): a byte piece must be <0xHH>",
                                  where, i, q);
                goto fail;
            }
            if (t->byte_id[byte] >= 0) {
                rc = synor__error(code, "%s: piece %zu (\"%s\"): byte 0x%02X already has piece %ld",
                                  where, i, q, byte, (long)t->byte_id[byte]);
                goto fail;
            }
            t->byte_id[byte] = (int32_t)i;
        }
        int32_t dup = synor__tokmap_find(&t->map, t->blob, t->off, p, len);
        if (dup >= 0) {
            rc = synor__error(code, "%s: piece %zu (\"%s\") duplicates piece %ld", where, i, q,
                              (long)dup);
            goto fail;
        }
        if ((rc = synor__tokmap_add(&t->map, t->blob, t->off, (uint32_t)i)))
            goto fail;
    }
    if ((rc = special_list(t)))
        goto fail;
    *out = t;
    return 0;
fail:
    synor_tokenizer_destroy(t);
    return rc;
}

int synor_tokenizer_create(const synor_tokenizer_spec *spec, synor_tokenizer **out)
{
    return synor__tokenizer_build(spec, "tokenizer", SYNOR_EINVAL, out);
}

/* --------------------------------------------------------- accessors */

size_t synor_tokenizer_size(const synor_tokenizer *tok) { return tok ? tok->n : 0; }
int32_t synor_tokenizer_bos(const synor_tokenizer *tok) { return tok ? tok->bos : -1; }
int32_t synor_tokenizer_eos(const synor_tokenizer *tok) { return tok ? tok->eos : -1; }
int32_t synor_tokenizer_unk(const synor_tokenizer *tok) { return tok ? tok->unk : -1; }

static int valid_id(const synor_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && (size_t)id < tok->n;
}

const char *synor_tokenizer_piece(const synor_tokenizer *tok, int32_t id, size_t *len)
{
    if (!valid_id(tok, id))
        return NULL;
    if (len)
        *len = tok->off[id + 1] - tok->off[id];
    return tok->blob + tok->off[id];
}

float synor_tokenizer_score(const synor_tokenizer *tok, int32_t id)
{
    return valid_id(tok, id) ? tok->scores[id] : 0.0f;
}

int synor_tokenizer_type(const synor_tokenizer *tok, int32_t id)
{
    return valid_id(tok, id) ? tok->types[id] : 0;
}

int32_t synor_tokenizer_find(const synor_tokenizer *tok, const char *piece, size_t len)
{
    if (!tok || (!piece && len))
        return -1;
    return synor__tokmap_find(&tok->map, tok->blob, tok->off, piece ? piece : "", len);
}

/* ------------------------------------------------------------ decode */

long synor_tokenizer_decode(const synor_tokenizer *tok, int32_t prev, int32_t id, char *buf,
                            size_t cap)
{
    if (!tok)
        return synor__error(SYNOR_EINVAL, "tokenizer: NULL tokenizer");
    if (!buf && cap)
        return synor__error(SYNOR_EINVAL, "tokenizer: NULL buffer of %zu bytes", cap);
    if (!valid_id(tok, id))
        return synor__error(SYNOR_EINVAL, "tokenizer: id %ld out of range (vocabulary of %zu pieces)",
                            (long)id, tok->n);
    int32_t type = tok->types[id];
    if (type == SYNOR_TOKEN_CONTROL)
        return 0;
    const char *p = tok->blob + tok->off[id];
    size_t len = tok->off[id + 1] - tok->off[id];
    if (type == SYNOR_TOKEN_BYTE) {
        if (cap)
            buf[0] = (char)synor__tok_byte_piece(p, len);
        return 1;
    }
    size_t i = 0, o = 0;
    /* SentencePiece's decoder drops the space its encoder prepended. */
    if (tok->add_space_prefix && tok->bos >= 0 && prev == tok->bos && len >= SYNOR__TOK_SPACE_LEN &&
        memcmp(p, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN) == 0)
        i = SYNOR__TOK_SPACE_LEN;
    while (i < len) {
        char c = p[i];
        if (len - i >= SYNOR__TOK_SPACE_LEN && memcmp(p + i, SYNOR__TOK_SPACE, SYNOR__TOK_SPACE_LEN) == 0) {
            c = ' ';
            i += SYNOR__TOK_SPACE_LEN;
        } else {
            i++;
        }
        if (o < cap)
            buf[o] = c;
        o++;
    }
    return (long)o;
}
