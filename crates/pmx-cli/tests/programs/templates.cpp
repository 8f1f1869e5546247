// perf_diff.rs: C++ templates (std::map, std::sort, std::string,
// std::unordered_map) for SECONDS (argv[1]); built with g++ -O2 -g.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

template <typename K, typename V>
static V sum_values(const std::map<K, V> &m) {
    V s{};
    for (const auto &kv : m) s += kv.second;
    return s;
}

static unsigned long next(unsigned long &x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? std::atof(argv[1]) : 0.8;
    auto end = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(seconds));
    unsigned long x = 88172645463325252UL, total = 0;
    while (std::chrono::steady_clock::now() < end) {
        std::map<std::string, long> words;
        std::unordered_map<long, long> counts;
        std::vector<long> v;
        for (int i = 0; i < 2000; i++) {
            long r = (long)(next(x) % 100000);
            words["w" + std::to_string(r % 3000)] += r;
            counts[r % 997]++;
            v.push_back(r);
        }
        std::sort(v.begin(), v.end());
        std::vector<std::string> keys;
        for (const auto &kv : words) keys.push_back(kv.first);
        std::sort(keys.begin(), keys.end(), [](const std::string &a, const std::string &b) {
            return a.size() != b.size() ? a.size() < b.size() : a > b;
        });
        total += (unsigned long)sum_values(words) + v[v.size() / 2] + keys.size() + counts.size();
    }
    std::printf("%lu\n", total);
    return 0;
}
