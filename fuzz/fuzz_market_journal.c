/* fuzz_market_journal.c - a market's journal.log as recovery reads it
 * (synor_market_open): the input's first byte chooses whether every
 * complete record gets its right CRC-32C (so that mutated records reach
 * the replay's checks of their contents, not only the CRC), the rest is the
 * file. The contract is fuzz_market_recovery's (market_files.h): read-only
 * changes nothing and agrees with a writable open, invariants hold, the
 * recovered state reopens and survives a snapshot, and the market still
 * takes commands. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "market_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t *j = malloc(size);
    FUZZ_CHECK(j, "out of memory");
    memcpy(j, data + 1, size - 1);
    if (data[0] & 1)
        fuzz_market_fix_journal(j, size - 1);
    fuzz_market_recovery(j, size - 1, NULL, 0);
    free(j);
    return 0;
}
