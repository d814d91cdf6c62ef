/* Placeholder until the owning issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_tokenize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tokscope: 'tokenize' is not implemented yet\n");
    return 2;
}
