/* Regression test of the channel-file fuzzer: replay every file of the
 * corpus directory (argv[1]) through the fuzz harness. A file named
 * OPEN.CHECK.what (made by gen_corpus.c) must also make nerve_chan_open
 * and nerve_chan_check return those codes (nerve_err_name, "OK" for 0);
 * other files (inputs the fuzzer found) must only not crash. Built with
 * the regular compiler, and run under ASan+UBSan and TSan with the other
 * unit tests. */
#include "nerve_test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_chan.h"

static int code_of(const char *s, size_t n, int *code)
{
    static const int codes[] = {0,
                                NERVE_ENOTCHAN,
                                NERVE_EVERSION,
                                NERVE_EABI,
                                NERVE_ETRUNC,
                                NERVE_ECORRUPT,
                                NERVE_ELAPPED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *nm = nerve_err_name(codes[i]);
        if (strlen(nm) == n && strncmp(nm, s, n) == 0) {
            *code = codes[i];
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        NT_FAIL("usage: %s CORPUS_DIR", argv[0]);
    nt_watchdog(120);
    DIR *d = opendir(argv[1]);
    NT_ASSERT(d != NULL);
    struct dirent *e;
    int files = 0, named = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "rb");
        NT_ASSERT(f != NULL);
        struct stat st;
        NT_ASSERT(fstat(fileno(f), &st) == 0);
        size_t n = (size_t)st.st_size;
        unsigned char *b = malloc(n ? n : 1);
        NT_ASSERT(b != NULL);
        NT_EQ(fread(b, 1, n, f), n);
        fclose(f);
        int r = nerve_fuzz_one(b, n);
        files++;
        /* OPEN.CHECK.what */
        const char *dot1 = strchr(e->d_name, '.');
        const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
        int want_open, want_check;
        if (dot2 &&
            code_of(e->d_name, (size_t)(dot1 - e->d_name), &want_open) &&
            code_of(dot1 + 1, (size_t)(dot2 - dot1 - 1), &want_check)) {
            named++;
            if (r != want_open)
                NT_FAIL("%s: open returned %s", e->d_name, nerve_err_name(r));
            /* Check the file once more, through nerve_chan_check alone. */
            char name[64], fpath[128], msg[256];
            snprintf(name, sizeof name, "nt-%d-replay", (int)getpid());
            snprintf(fpath, sizeof fpath, "/dev/shm/nerve.%s", name);
            FILE *o = fopen(fpath, "wb");
            NT_ASSERT(o != NULL);
            NT_EQ(fwrite(b, 1, n, o), n);
            fclose(o);
            int cr = nerve_chan_check(name, msg, sizeof msg);
            unlink(fpath);
            if (cr != want_check)
                NT_FAIL("%s: check returned %s (%s)", e->d_name,
                        nerve_err_name(cr), msg);
        }
        free(b);
    }
    closedir(d);
    printf("replayed %d corpus files (%d with expected results)\n", files,
           named);
    NT_CMP(named, >=, 20);
    return 0;
}
