/* synor/tokenizer.h - SentencePiece-style BPE tokenizers, as Llama models
 * use them (issue 12 points 1 and 2).
 *
 * A vocabulary is a list of pieces (byte strings), each with a score and a
 * type (GGUF's tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control,
 * 4 user-defined, 5 unused, 6 byte). Encoding, as SentencePiece's BPE model
 * and llama2.c/llama.cpp do it:
 *   1. the text, with a space prepended (add_space_prefix; not to an empty
 *      text) and every space replaced by U+2581 ("▁"), is split into UTF-8
 *      characters;
 *   2. a character that is a normal or user-defined piece becomes that
 *      piece; one that is not, and every byte of ill-formed UTF-8, is byte
 *      fallback: one <0xHH> piece per byte (the unknown piece for a byte
 *      without one; SYNOR_EINVAL if there is no unknown piece either);
 *   3. repeatedly, the adjacent pair whose concatenation is a normal or
 *      user-defined piece with the highest score is merged (leftmost on
 *      ties), until none is. Byte-fallback pieces never merge.
 * Step 3 runs in O(n log n) (a heap over adjacent pairs), with the result
 * of the plain loop. With a SentencePiece Llama vocabulary this gives the
 * ids of llama2.c's run.c and llama.cpp's SPM tokenizer. Known differences
 * (docs/TOKENIZER.md):
 *   - ill-formed UTF-8: here each bad byte alone falls back; run.c groups a
 *     byte with the continuation bytes after it (so "i\x9a" falls back as
 *     two bytes there, "i" and <0x9A> here), llama.cpp takes the length
 *     from the lead byte;
 *   - run.c stops at a NUL byte and ignores merges scoring -1e10 or less;
 *     here the text is len bytes and every score counts;
 *   - llama.cpp (like SentencePiece) merges characters that are not pieces
 *     if their concatenation is one, and matches any piece type; run.c
 *     matches any type. Neither happens with Llama vocabularies;
 *   - user-defined pieces merge like normal ones (SentencePiece and
 *     llama.cpp match them whole before BPE).
 * Decoding maps pieces back to bytes: "▁" to a space (the first one after
 * BOS dropped when add_space_prefix), <0xHH> to the byte, control pieces to
 * nothing, an unknown piece to its text (as run.c does).
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
 * piece for an empty vocabulary, an empty or duplicate piece, a NaN score,
 * a type outside 1..6, a byte-type piece not spelled <0xHH> (hex digits
 * either case) or a second one for the same byte, an id out of range;
 * SYNOR_ENOMEM. */
int synor_tokenizer_create(const synor_tokenizer_spec *spec, synor_tokenizer **out);
/* llama2.c's tokenizer.bin for a vocabulary of vocab_size pieces (its
 * layout, little-endian: int32 max piece length, then per piece a float
 * score, an int32 length and the bytes; unknown 0, BOS 1, EOS 2; byte
 * pieces spelled "<0xHH>"; "▁" written as a plain space, which loading
 * turns back into "▁"). Types are inferred: 0 unknown, 1 and 2 control,
 * <0xHH> byte, the rest normal; add_space_prefix is on. SYNOR_EINVAL for a
 * vocab_size below 3; SYNOR_EIO; SYNOR_EPARSE naming the file, the piece
 * index and what is wrong (truncated, negative or zero length, longer than
 * the max length, NaN score, duplicate piece, bytes left after the last
 * piece). */
int synor_tokenizer_load_llama2c(const char *path, size_t vocab_size, synor_tokenizer **out);
/* Writes tok in tokenizer.bin's layout (atomically), "▁" as a space, as
 * llama2.c's export does. SYNOR_EINVAL unless unknown, BOS, EOS are ids 0,
 * 1, 2. Types are not stored (loading infers them, see above). */
int synor_tokenizer_save_llama2c(const synor_tokenizer *tok, const char *path);
/* Trains a BPE vocabulary of vocab_size pieces on text: <unk>, <s>, </s>,
 * the 256 <0xHH> byte pieces, the characters of the text, then merges of
 * the most frequent adjacent pair (words split at spaces, "▁" prefixed, as
 * SentencePiece does), each merge scored below the previous one so encoding
 * replays the merges in order (merge k scores -k; characters score below
 * every merge, by frequency). Fewer than vocab_size pieces when the text
 * runs out of pairs (every word one piece). Deterministic: pairs tie to
 * the smaller ids, characters to their bytes. Ill-formed UTF-8 bytes are no
 * characters; they split words. SYNOR_EINVAL if vocab_size is below 259 +
 * the number of distinct characters ("▁" included) or above 2^24. */
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
 * cap: then only cap are written; ids may be NULL with cap 0), or a
 * negative SYNOR_E* code: SYNOR_EINVAL for bos/eos asked of a vocabulary
 * without, or a byte with no piece to fall back to; SYNOR_ERANGE for a
 * text over 1 GiB; SYNOR_ENOMEM. */
long synor_tokenizer_encode(const synor_tokenizer *tok, const char *text, size_t len, int bos,
                            int eos, int32_t *ids, size_t cap);
/* As synor_tokenizer_encode (no EOS), but where the text holds a control
 * or user-defined piece's bytes that piece is taken whole ("<|im_start|>",
 * "</s>": a chat template's markers; the longest where several begin
 * there), as llama.cpp's tokenizer does with parse_special: the text
 * between them is encoded fragment by fragment, each with the space prefix
 * (add_space_prefix). Without such pieces in the text, the ids of
 * synor_tokenizer_encode. */
long synor_tokenizer_encode_special(const synor_tokenizer *tok, const char *text, size_t len,
                                    int bos, int32_t *ids, size_t cap);
/* As synor_tokenizer_encode without BOS, EOS or the space prefix: text
 * that goes on from other ids (fill in the middle's prefix and suffix, as
 * CodeLlama's reference encodes them). */
long synor_tokenizer_encode_fragment(const synor_tokenizer *tok, const char *text, size_t len,
                                     int32_t *ids, size_t cap);
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
