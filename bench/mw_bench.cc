#include "bench/bench_main.h"

int main(int argc, char** argv) { return mwbench::benchMain(argc, argv); }
