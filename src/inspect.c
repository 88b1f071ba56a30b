/* inspect.c — placeholder until the runtime lands (same session). */
#include <stdio.h>

#include "cli.h"

int sl_inspect_cmd(int argc, char **argv) {
        (void)argc;
        (void)argv;
        fprintf(stderr, "sluice inspect: not built yet\n");
        return SL_EXIT_FAIL;
}
