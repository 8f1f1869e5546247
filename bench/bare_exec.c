/* The floor of a launcher: fork, exec the command in the child, wait
 * for it and exit with its status. bench/startup.py --bare runs its
 * first command under this, so both sides of a start-up comparison
 * are a process that starts a command and waits for it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: bare_exec CMD [ARG...]\n", stderr);
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
