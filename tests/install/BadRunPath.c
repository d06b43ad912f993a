/* A program linked with a bad RUNPATH (tests/install/CMakeLists.txt), for the check to refuse. */
int main(void) { return 0; }
