# SPDX-License-Identifier: MIT
# For make.sh: eight generated C files compiled in parallel, linked, run.
N := 0 1 2 3 4 5 6 7
OBJS := $(foreach n,$(N),part$(n).o)

all: prog
	./prog

part%.c:
	printf 'int part$*(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * $*; return s; }\n' > $@

main.c:
	printf '#include <stdio.h>\n' > $@
	for n in $(N); do printf 'int part%s(int);\n' $$n; done >> $@
	printf 'int main(void) {\n' >> $@
	for n in $(N); do printf '  printf("part%s %%d\\n", part%s(1000));\n' $$n $$n; done >> $@
	printf '  return 0;\n}\n' >> $@

prog: main.o $(OBJS)
	cc -o $@ $^

%.o: %.c
	cc -O1 -c -o $@ $<
