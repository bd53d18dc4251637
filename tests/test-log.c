/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log lines are one safe line whatever they quote: a newline in a file name must not start a forged
 * line, an escape sequence must not reach a terminal or the journal raw, invalid UTF-8 is shown as bytes,
 * and a 1 MB value is cut (the hostile-input probe found all three in the daemon's log). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "test-util.h"

static const char *escaped(const char *in) {
        static char out[4 * LOG_LINE_MAX + 8];

        log_escape(in, out, sizeof out);
        return out;
}

TEST(escape) {
        ASSERT_STREQ(escaped("plain /usr/bin/python3.11"), "plain /usr/bin/python3.11");
        ASSERT_STREQ(escaped("a\nFAKE: forged line"), "a\\x0aFAKE: forged line");
        ASSERT_STREQ(escaped("\033[2J\r"), "\\x1b[2J\\x0d");
        ASSERT_STREQ(escaped("tab\tkept"), "tab\tkept");
        ASSERT_STREQ(escaped("back\\slash"), "back\\\\slash");
        ASSERT_STREQ(escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
        ASSERT_STREQ(escaped("bad \xff\xfe, cut \xc3, overlong \xc0\xaf, surrogate \xed\xa0\x80, del \x7f"),
                     "bad \\xff\\xfe, cut \\xc3, overlong \\xc0\\xaf, surrogate \\xed\\xa0\\x80, del \\x7f");
}

/* What log_error() writes, through a temporary file as stderr. */
TEST(one_line) {
        char path[] = "/tmp/test-log-XXXXXX", got[16384], *big;
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        FILE *f;
        size_t n;

        ASSERT_TRUE(fd >= 0 && saved >= 0);
        big = malloc(1000001);
        ASSERT_TRUE(big);
        memset(big, 'v', 1000000);
        big[1000000] = 0;
        fflush(stderr);
        ASSERT_TRUE(dup2(fd, STDERR_FILENO) >= 0);
        log_error("Session file %s not stored", "/mnt/x\nseeklessd: Forged line");
        log_warning("Value %s", big);
        fflush(stderr);
        ASSERT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
        f = fdopen(fd, "r");
        ASSERT_TRUE(f && fseek(f, 0, SEEK_SET) == 0);
        n = fread(got, 1, sizeof got - 1, f);
        got[n] = 0;
        fclose(f);
        unlink(path);
        free(big);
        /* two lines, the first with the newline escaped, the second cut at LOG_LINE_MAX with "..." */
        ASSERT_TRUE(strncmp(got, "Session file /mnt/x\\x0aseeklessd: Forged line not stored\n", 56) == 0);
        char *second = strchr(got, '\n') + 1;
        ASSERT_EQ(strlen(second), LOG_LINE_MAX + strlen("...\n"));
        ASSERT_TRUE(strcmp(second + LOG_LINE_MAX, "...\n") == 0);
}

int main(void) {
        RUN(escape);
        RUN(one_line);
        return 0;
}
