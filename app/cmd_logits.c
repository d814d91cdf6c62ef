/* Placeholder until the owning issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_logits(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tokscope: 'logits' is not implemented yet\n");
    return 2;
}
