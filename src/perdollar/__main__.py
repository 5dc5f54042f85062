"""`python -m perdollar` runs the command line, for environments without the console script."""

from perdollar.cli import main

main()
