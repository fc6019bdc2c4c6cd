/* tokenizer_internal.h - what the files of src/tokenizer/ share: the
 * tokenizer's layout, the piece hash map, UTF-8 character splitting. */
#ifndef SYNOR_TOKENIZER_INTERNAL_H
#define SYNOR_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "synor/tokenizer.h"

/* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space. */
#define SYNOR__TOK_SPACE "\xe2\x96\x81"
#define SYNOR__TOK_SPACE_LEN 3

/* Open-addressing map from a piece's bytes to its id. The pieces live in
 * one blob (piece i is blob[off[i]..off[i+1])), which the caller passes to
 * each call, so the blob may move (realloc) between calls. Slots hold
 * id + 1; 0 is empty. */
typedef struct synor__tokmap {
    uint32_t *slots;
    size_t mask;  /* slots - 1; slots is a power of two */
    size_t count;
} synor__tokmap;

void synor__tokmap_free(synor__tokmap *m);
/* The id of s[0..n), or -1. */
int32_t synor__tokmap_find(const synor__tokmap *m, const char *blob, const size_t *off,
                           const char *s, size_t n);
/* Adds id (its bytes already in blob); the caller checked it is absent.
 * Grows the table; SYNOR_ENOMEM with the map unchanged. */
int synor__tokmap_add(synor__tokmap *m, const char *blob, const size_t *off, uint32_t id);

struct synor_tokenizer {
    size_t n;
    char *blob;      /* every piece's bytes, back to back */
    size_t *off;     /* n + 1 offsets into blob */
    float *scores;
    int32_t *types;
    int32_t bos, eos, unk;
    int add_space_prefix;
    int32_t byte_id[256]; /* the <0xHH> piece of each byte, or -1 */
    size_t max_len;       /* the longest piece: no merge can be longer */
    /* control and user-defined pieces, longest first: what
     * synor_tokenizer_encode_special matches in a text */
    int32_t *special;
    size_t nspecial;
    synor__tokmap map;
};

/* Pieces that text can become: a character, or a merge of two. Control,
 * unknown, byte and unused pieces are never produced from text that way
 * (SentencePiece keeps them out of its piece table too). */
static inline int synor__tok_mergeable(const synor_tokenizer *tok, int32_t id)
{
    return tok->types[id] == SYNOR_TOKEN_NORMAL || tok->types[id] == SYNOR_TOKEN_USER_DEFINED;
}

/* synor_tokenizer_create with errors prefixed by `where` (a file's path,
 * or "tokenizer") and reported with code (SYNOR_EINVAL, or SYNOR_EPARSE
 * for a file's contents); SYNOR_ENOMEM stays SYNOR_ENOMEM. */
int synor__tokenizer_build(const synor_tokenizer_spec *spec, const char *where, int code,
                           synor_tokenizer **out);

/* llama2.c's tokenizer.bin from memory (path names it in messages), and
 * into memory (*data owned by the caller, synor__free). */
int synor__tokenizer_parse_llama2c(const char *path, const void *data, size_t size,
                                   size_t vocab_size, synor_tokenizer **out);
int synor__tokenizer_serialize_llama2c(const synor_tokenizer *tok, const char *path,
                                       char **data, size_t *size);

/* The length of the well-formed UTF-8 character at s[0..n) (1 to 4), or 0
 * if s does not start with one (a stray continuation byte, an overlong
 * form, a surrogate, a code point above U+10FFFF, a cut-off sequence). */
size_t synor__utf8_char(const unsigned char *s, size_t n);

/* 0..255 if s[0..n) is a byte piece "<0xHH>" (hex digits either case),
 * else -1. */
int synor__tok_byte_piece(const char *s, size_t n);

/* Writes s[0..n) for an error message into buf: printable ASCII as is,
 * other bytes as \xHH, cut at about 40 bytes with "...". */
void synor__tok_quote(const char *s, size_t n, char *buf, size_t size);

#endif
