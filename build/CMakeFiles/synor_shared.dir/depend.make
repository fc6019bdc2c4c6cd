# Empty dependencies file for synor_shared.
# This may be replaced when dependencies are built.
