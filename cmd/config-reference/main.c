/* reaper-config-reference: prints the configuration reference (Markdown)
 * that docs/CONFIGURATION.md holds, generated from the configuration table
 * (rp_config_reference). scripts/gen-config-reference writes the file;
 * test_config_reference checks it is current. Exit 0, or 1 out of memory. */
#include <stdio.h>
#include <stdlib.h>

#include "rp_config.h"

int main(void) {
    char *text = NULL;
    if (rp_config_reference(&text) != RP_OK) {
        fputs("reaper-config-reference: out of memory\n", stderr);
        return 1;
    }
    int rc = fputs(text, stdout) < 0 || fflush(stdout) != 0 ? 1 : 0;
    free(text);
    return rc;
}
