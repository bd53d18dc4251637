/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* seeklessctl's verbs as a table (name, argument counts, function), and dispatch_verb(), which finds the
 * verb argv names, checks its argument count and runs it. */

#include <stdbool.h>

#define VERB_ANY ((unsigned) -1)

/* Returned (negated) by dispatch_verb() and by verbs for command-line mistakes, so that main() can exit with
 * status 2 instead of 1. Deliberately outside the errno range: never print it with %m. */
#define EUSAGE 4096

typedef enum VerbFlags {
        VERB_DEFAULT = 1 << 0, /* run this verb when no verb is given */
} VerbFlags;

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args; /* counting the verb itself, VERB_ANY for no limit */
        VerbFlags flags;
        int (*dispatch)(int argc, char *argv[], void *userdata);
} Verb;

/* Finds the verb named by argv[first] (or the default verb if there are no arguments left), checks the
 * argument count and runs it with argc/argv starting at the verb. On a usage mistake it logs one line and
 * returns -EUSAGE; otherwise it returns what the verb returns. */
int dispatch_verb(int argc, char *argv[], int first, const Verb verbs[], void *userdata);

/* Logs "See 'PROGRAM --help'." after a usage message. */
void verb_usage_hint(void);
