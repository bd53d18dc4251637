/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/alloc-util.h"
#include "plan/inoset.h"
#include "common/macro.h"

void ino_set_add(InoSet *s, dev_t dev, ino_t ino) {
        if (GREEDY_REALLOC(s->dev, s->allocated_dev, s->n + 1) < 0 ||
            GREEDY_REALLOC(s->ino, s->allocated_ino, s->n + 1) < 0)
                return;
        s->dev[s->n] = dev;
        s->ino[s->n++] = ino;
}

bool ino_set_has(const InoSet *s, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < s->n; i++)
                if (s->dev[i] == dev && s->ino[i] == ino)
                        return true;
        return false;
}

void ino_set_done(InoSet *s) {
        free(s->dev);
        free(s->ino);
        *s = (InoSet) {};
}

void ino_set_add_running_executables(InoSet *s) {
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char p[sizeof de->d_name + 16];
                struct stat st;
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(p, sizeof p, "/proc/%s/exe", de->d_name);
                if (stat(p, &st) >= 0 && !ino_set_has(s, st.st_dev, st.st_ino))
                        ino_set_add(s, st.st_dev, st.st_ino);
        }
}

void ino_set_add_swap_files(InoSet *s) {
        _cleanup_fclose_ FILE *f = fopen("/proc/swaps", "re");
        char line[4200], path[4096];

        if (!f)
                return;
        while (fgets(line, sizeof line, f)) {
                struct stat st;
                if (sscanf(line, "%4095s", path) == 1 && path[0] == '/' && stat(path, &st) >= 0 && S_ISREG(st.st_mode))
                        ino_set_add(s, st.st_dev, st.st_ino);
        }
}
