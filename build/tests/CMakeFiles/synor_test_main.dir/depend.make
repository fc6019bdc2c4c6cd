# Empty dependencies file for synor_test_main.
# This may be replaced when dependencies are built.
