/*
 * MSRs through the msr driver: read the TSC on every CPU given, program
 * instructions and cycles with the plan `pmx msr plan` shows, read the
 * programmed counters after some work, and restore every register on
 * close. Needs root and the msr driver (modprobe msr); without them,
 * pmx_msr_open fails and pmx_last_error() says which is missing.
 * Usage: msr [CPUS] (default: every online CPU)
 *
 * Build: cc -I include examples/c/msr.c target/release/libpmx.a -lpthread -ldl -lm
 */
#include <pmx.h>

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    pmx_msr_session *s = pmx_msr_open(argc > 1 ? argv[1] : NULL);
    if (!s) {
        fprintf(stderr, "%s\n", pmx_last_error());
        return 3;
    }
    uint64_t tsc;
    if (pmx_msr_read(s, "IA32_TIME_STAMP_COUNTER", 0, &tsc) == 0)
        printf("cpu 0 IA32_TIME_STAMP_COUNTER = %#" PRIx64 "\n", tsc);
    else
        printf("IA32_TIME_STAMP_COUNTER: %s\n", pmx_last_error());
    int k = pmx_msr_program(s, "instructions,cycles");
    if (k < 0) {
        fprintf(stderr, "%s\n", pmx_last_error());
        pmx_msr_close(s);
        return 1;
    }
    printf("programmed %d counters\n", k);
    volatile double x = 0;
    for (int i = 0; i < 10000000; i++)
        x += i;
    uint64_t fixed0;
    if (pmx_msr_read(s, "IA32_FIXED_CTR0", 0, &fixed0) == 0)
        printf("cpu 0 IA32_FIXED_CTR0 = %" PRIu64 "\n", fixed0);
    return pmx_msr_close(s) == 0 ? 0 : 1;
}
