/* synor/tokenizer.h - SentencePiece-style BPE tokenizers, as Llama models
 * use them (issue 12 points 1 and 2).
 *
 * A vocabulary is a list of pieces (byte strings), each with a score and a
 * type (GGUF's tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control,
 * 4 user-defined, 5 unused, 6 byte). Encoding, as SentencePiece's BPE model
 * and llama2.c/llama.cpp do it:
 *   1. the text, with a space prepended (add_space_prefix) and every space
 *      replaced by U+2581 ("▁"), is split into UTF-8 characters;
 *   2. a character that is a piece becomes that piece; one that is not is
 *      byte fallback: one <0xHH> piece per byte (the unknown piece if the
 *      vocabulary has no byte pieces);
 *   3. repeatedly, the adjacent pair whose concatenation is a piece with
 *      the highest score is merged (leftmost on ties), until none is.
 * Decoding maps pieces back to bytes: "▁" to a space (the first one after
 * BOS dropped when add_space_prefix), <0xHH> to the byte, control pieces to
 * nothing.
 *
 * Vocabularies come from a GGUF file's metadata (tokenizer.ggml.*, built by
 * the caller with synor_tokenizer_create), from llama2.c's tokenizer.bin,
 * or are trained here on a text (synor_tokenizer_train), so tests and the
 * README's example need no downloaded vocabulary. */
#ifndef SYNOR_TOKENIZER_H
#define SYNOR_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_tokenizer synor_tokenizer;

enum {
    SYNOR_TOKEN_NORMAL = 1,
    SYNOR_TOKEN_UNKNOWN = 2,
    SYNOR_TOKEN_CONTROL = 3,
    SYNOR_TOKEN_USER_DEFINED = 4,
    SYNOR_TOKEN_UNUSED = 5,
    SYNOR_TOKEN_BYTE = 6
};

typedef struct synor_tokenizer_spec {
    size_t n;                  /* pieces */
    const char *const *pieces; /* piece i: pieces[i][0..lens[i]) */
    const size_t *lens;
    const float *scores;       /* NULL: all 0 */
    const int32_t *types;      /* NULL: normal, except <0xHH> pieces (byte),
                                  and bos/eos/unk (control, unknown) */
    int32_t bos, eos, unk;     /* -1 where none */
    int add_space_prefix;      /* 1 for Llama vocabularies */
} synor_tokenizer_spec;

/* Builds a tokenizer (the arguments are copied). SYNOR_EINVAL naming the
 * piece for an empty vocabulary, a duplicate piece, an id out of range;
 * SYNOR_ENOMEM. */
int synor_tokenizer_create(const synor_tokenizer_spec *spec, synor_tokenizer **out);
/* llama2.c's tokenizer.bin for a vocabulary of vocab_size pieces (its
 * layout: int32 max piece length, then per piece a float score, an int32
 * length and the bytes; BOS 1, EOS 2, unknown 0, <0xHH> pieces as bytes).
 * SYNOR_EIO, SYNOR_EPARSE naming the file, the piece index and what is
 * wrong (truncated, negative length, ...). */
int synor_tokenizer_load_llama2c(const char *path, size_t vocab_size, synor_tokenizer **out);
/* Writes tok in tokenizer.bin's layout (atomically). */
int synor_tokenizer_save_llama2c(const synor_tokenizer *tok, const char *path);
/* Trains a BPE vocabulary of vocab_size pieces on text: <unk>, <s>, </s>,
 * the 256 <0xHH> byte pieces, the characters of the text, then merges of
 * the most frequent adjacent pair (words split at spaces, "▁" prefixed, as
 * SentencePiece does), each merge scored below the previous one so encoding
 * replays the merges in order. Deterministic. SYNOR_EINVAL if vocab_size is
 * below 259 + the number of distinct characters. */
int synor_tokenizer_train(const char *text, size_t len, size_t vocab_size,
                          synor_tokenizer **out);
void synor_tokenizer_destroy(synor_tokenizer *tok); /* accepts NULL */

size_t synor_tokenizer_size(const synor_tokenizer *tok);
int32_t synor_tokenizer_bos(const synor_tokenizer *tok); /* -1 where none */
int32_t synor_tokenizer_eos(const synor_tokenizer *tok);
int32_t synor_tokenizer_unk(const synor_tokenizer *tok);
/* The id of the piece piece[0..len) (any type), or -1. */
int32_t synor_tokenizer_find(const synor_tokenizer *tok, const char *piece, size_t len);
/* Piece id's bytes (not NUL-terminated) and its score and type; NULL, 0
 * and 0 for an id out of range. */
const char *synor_tokenizer_piece(const synor_tokenizer *tok, int32_t id, size_t *len);
float synor_tokenizer_score(const synor_tokenizer *tok, int32_t id);
int synor_tokenizer_type(const synor_tokenizer *tok, int32_t id);

/* Encodes text[0..len) into ids (at most cap; BOS first if bos, EOS last
 * if eos). Returns the number of ids the whole text needs (which may exceed
 * cap: then only cap are written), or a negative SYNOR_E* code. */
long synor_tokenizer_encode(const synor_tokenizer *tok, const char *text, size_t len, int bos,
                            int eos, int32_t *ids, size_t cap);
/* The bytes of id when it follows prev (prev = BOS drops the leading space
 * of add_space_prefix vocabularies): written to buf (at most cap), returns
 * their count (may exceed cap), or a negative code for an id out of range.
 * Control pieces decode to nothing. */
long synor_tokenizer_decode(const synor_tokenizer *tok, int32_t prev, int32_t id, char *buf,
                            size_t cap);

#ifdef __cplusplus
}
#endif
#endif
