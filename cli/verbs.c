/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "cli/verbs.h"

void verb_usage_hint(void) {
        log_error("See '%s --help'.", program_invocation_short_name);
}

static const Verb *verbs_find(const Verb verbs[], const char *name) {
        for (const Verb *v = verbs; v->name; v++)
                if (name ? streq(v->name, name) : (v->flags & VERB_DEFAULT))
                        return v;
        return NULL;
}

int dispatch_verb(int argc, char *argv[], int first, const Verb verbs[], void *userdata) {
        static char *no_args[] = { NULL, NULL };
        const Verb *verb;
        unsigned left;

        left = first < argc ? (unsigned) (argc - first) : 0;

        verb = verbs_find(verbs, left > 0 ? argv[first] : NULL);
        if (!verb) {
                if (left > 0)
                        log_error("Unknown command '%s'.", argv[first]);
                else
                        log_error("Command verb required.");
                verb_usage_hint();
                return -EUSAGE;
        }

        if (left == 0) {
                /* The default verb runs as if its name had been given. */
                no_args[0] = (char *) verb->name;
                return verb->dispatch(1, no_args, userdata);
        }

        if (verb->min_args != VERB_ANY && left < verb->min_args) {
                log_error("Too few arguments for '%s'.", verb->name);
                verb_usage_hint();
                return -EUSAGE;
        }
        if (verb->max_args != VERB_ANY && left > verb->max_args) {
                log_error("Too many arguments for '%s'.", verb->name);
                verb_usage_hint();
                return -EUSAGE;
        }

        return verb->dispatch((int) left, argv + first, userdata);
}
