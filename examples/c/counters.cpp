// The counters example in C++ through include/pmx.hpp: the page faults of
// touching N fresh pages, counted inside a region too; a bad event name
// throws pmx::error with pmx's reason. Usage: counters_cpp [N]
//
// Build: c++ -I include examples/c/counters.cpp target/release/libpmx.a -lpthread -ldl -lm
#include <pmx.hpp>

#include <sys/mman.h>

#include <cstdlib>
#include <iostream>

static void touch_pages(long n)
{
    long page = 4096;
    void *m = mmap(nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        std::exit(1);
    madvise(m, n * page, MADV_NOHUGEPAGE);
    auto *p = static_cast<volatile char *>(m);
    for (long i = 0; i < n; i++)
        p[i * page] = 1;
    munmap(m, n * page);
}

static void count(long n, bool print)
{
    pmx::counters c("page-faults,task-clock");
    c.enable();
    {
        pmx::region r("touch");
        touch_pages(n);
    }
    c.disable();
    for (const auto &r : c.read())
        if (print)
            std::cout << r.name << " value=" << r.count.value << "\n";
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? std::atol(argv[1]) : 100;
    try {
        count(1, false); // the code and stack pages, once
        count(n, true);
        pmx::counters bad("page-fautls");
    } catch (const pmx::error &e) {
        std::cout << "error: " << e.what() << "\n";
    }
    return 0;
}
