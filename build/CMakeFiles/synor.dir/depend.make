# Empty dependencies file for synor.
# This may be replaced when dependencies are built.
