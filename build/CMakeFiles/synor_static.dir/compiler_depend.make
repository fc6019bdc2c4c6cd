# Empty compiler generated dependencies file for synor_static.
# This may be replaced when dependencies are built.
