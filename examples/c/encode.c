/*
 * Event specs to register values and back, as `pmx encode` and
 * `pmx decode` do: the event-select value of LONGEST_LAT_CACHE.MISS's
 * encoding on Intel and of an AMD event, a field read back, and a bad
 * spec's error.
 *
 * Build: cc -I include examples/c/encode.c target/release/libpmx.a -lpthread -ldl -lm
 */
#include <pmx.h>

#include <inttypes.h>
#include <stdio.h>

static int show(const char *spec, const char *arch, const char *const *fields)
{
    uint64_t reg, config;
    if (pmx_encode(spec, arch, &reg, &config) != 0) {
        printf("%s: %s\n", spec, pmx_last_error());
        return 1;
    }
    printf("%s %s reg=%#" PRIx64 " config=%#" PRIx64 "\n", arch, spec, reg, config);
    printf(" ");
    for (int i = 0; fields[i]; i++) {
        uint64_t v;
        if (pmx_decode(arch, reg, fields[i], &v) != 0) {
            printf("\n%s\n", pmx_last_error());
            return 1;
        }
        printf(" %s=%#" PRIx64, fields[i], v);
    }
    printf("\n");
    return 0;
}

int main(void)
{
    int bad = 0;
    /* The field names are the vendors' (Intel SDM, AMD APM). */
    const char *intel[] = { "EventSelect", "UMASK", "USR", "OS", "EN", NULL };
    const char *amd[] = { "EventSelect[7:0]", "UnitMask", "USR", "OS", "En", NULL };
    bad |= show("event=0x2e,umask=0x41", "intel", intel);
    bad |= show("event=0x76:u", "amd", amd);
    /* A field the layout does not have, and a bad spec: -1 and why. */
    uint64_t v;
    if (pmx_decode("intel", 0, "nope", &v) == 0)
        return 1;
    printf("%s\n", pmx_last_error());
    if (pmx_encode("event=0x2e,umask=zz", "intel", &v, NULL) == 0)
        return 1;
    printf("%s\n", pmx_last_error());
    return bad;
}
