/* fuzz_market_snapshot.c - a market's snapshot.bin as recovery reads it,
 * beside a journal: the input's first byte chooses whether the snapshot's
 * length and CRC are set right (so that mutated states reach the restore's
 * checks of every value - a CRC only says the bytes are the ones written);
 * the rest is the file, beside an empty journal. The contract is
 * fuzz_market_recovery's (market_files.h). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "market_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t *s = malloc(size);
    FUZZ_CHECK(s, "out of memory");
    memcpy(s, data + 1, size - 1);
    if (data[0] & 1)
        fuzz_market_fix_snapshot(s, size - 1);
    /* an empty journal: the header of the current version */
    static const uint8_t header[] = "SYNJRNL2";
    fuzz_market_recovery(header, 8, s, size - 1);
    free(s);
    return 0;
}
