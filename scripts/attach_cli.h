/* profrun attach (scripts/attach.c): argv[0] is "attach". Returns the exit status. */
#ifndef PROF_ATTACH_CLI_H
#define PROF_ATTACH_CLI_H

int attach_main(int argc, char **argv);

#endif
