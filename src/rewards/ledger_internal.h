/* ledger_internal.h - the ledger's record format (ledger_codec.c), shared
 * with the ledger itself (ledger.c). Never installed. */
#ifndef SYNOR_LEDGER_INTERNAL_H
#define SYNOR_LEDGER_INTERNAL_H

#include <stddef.h>

#include "synor/rewards.h"

#define SYNOR__LEDGER_MAGIC "SYNRWLD1"
/* body sizes: 126 fixed bytes + up to 63 + 63 + 63 + 31 of strings */
#define SYNOR__LEDGER_MIN_BODY 126
#define SYNOR__LEDGER_MAX_BODY 346
#define SYNOR__LEDGER_MAX_RECORD (8 + SYNOR__LEDGER_MAX_BODY)

/* Writes e as a whole record (header + body) into rec (at least
 * SYNOR__LEDGER_MAX_RECORD bytes); returns its length. */
size_t synor__ledger_encode(const synor_ledger_entry *e, unsigned char *rec);
/* Decodes a body of n bytes (CRC already checked) into e; NULL if it is a
 * valid entry on its own, else what is wrong with it. */
const char *synor__ledger_decode(const unsigned char *body, size_t n, synor_ledger_entry *e);

#endif
