/* Known work in two functions, for the counters-per-function tests
 * (report_export.rs, serve_pprof.rs): spin_here only computes (CPU time,
 * no page fault); fault_here maps 64 MiB and touches each page once (one
 * page fault per page), then unmaps it. Built with -g and frame pointers.
 * Usage: spin_fault SECONDS (about: 10 rounds of each per second, each function some 40 ms a round). */
#include <stdlib.h>
#include <sys/mman.h>

volatile unsigned long sink;

__attribute__((noinline)) void spin_here(void) {
    for (unsigned long i = 0; i < 20000000UL; i++) {
        sink += i * 7;
    }
}

__attribute__((noinline)) void fault_here(void) {
    size_t len = 64UL << 20;
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return;
    }
    for (size_t i = 0; i < len; i += 4096) {
        p[i] = 1;
    }
    munmap(p, len);
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 60;
    for (int i = 0; i < seconds * 10; i++) {
        spin_here();
        fault_here();
    }
    return 0;
}
