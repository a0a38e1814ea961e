/* The one size grammar, nerve_size_parse() (include/nerve/size.h), against
 * the shared table tests/size_cases.txt ($NERVE_SIZE_CASES), which the
 * Python and Rust readers are tested against too. */
#include "nerve_test.h"

#include <errno.h>

/* One table line: "'TEXT' VALUE" or "'TEXT' bad". */
static void check_line(char *line, int lineno)
{
    char *open = strchr(line, '\'');
    char *close = strrchr(line, '\'');
    if (!open || close == open)
        NT_FAIL("size_cases.txt:%d: no quoted text", lineno);
    *close = '\0';
    const char *text = open + 1, *want = close + 1;
    while (*want == ' ')
        want++;
    uint64_t got = 12345;
    int rc = nerve_size_parse(text, &got);
    if (strncmp(want, "bad", 3) == 0) {
        if (rc != NERVE_EINVAL || got != 12345)
            NT_FAIL("'%s': rc %d, value %" PRIu64 "; want NERVE_EINVAL, "
                    "value untouched",
                    text, rc, got);
        if (nerve_err_detail(rc)[0] == '\0')
            NT_FAIL("'%s': refused without a detail", text);
        return;
    }
    errno = 0;
    char *end;
    uint64_t v = strtoull(want, &end, 10);
    if (errno || (*end != '\n' && *end != '\0'))
        NT_FAIL("size_cases.txt:%d: bad expected value", lineno);
    if (rc != 0 || got != v)
        NT_FAIL("'%s': rc %d, value %" PRIu64 "; want %" PRIu64, text, rc, got,
                v);
}

int main(void)
{
    const char *path = getenv("NERVE_SIZE_CASES");
    if (!path)
        NT_FAIL("NERVE_SIZE_CASES (tests/size_cases.txt) is not set");
    FILE *f = fopen(path, "r");
    if (!f)
        NT_FAIL("cannot open %s", path);
    char line[256];
    int lineno = 0, cases = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        check_line(line, lineno);
        cases++;
    }
    fclose(f);
    NT_CMP(cases, >=, 30);
    /* NULLs are refused with a code, never dereferenced. */
    uint64_t v;
    NT_RC(nerve_size_parse(NULL, &v), NERVE_EINVAL);
    NT_RC(nerve_size_parse("1K", NULL), NERVE_EINVAL);
    /* The detail says which rule: overflow is not a malformed text. */
    NT_RC(nerve_size_parse("16777216T", &v), NERVE_EINVAL);
    NT_ASSERT(strstr(nerve_err_detail(NERVE_EINVAL), "2^64") != NULL);
    printf("%d size cases agree\n", cases);
    return 0;
}
