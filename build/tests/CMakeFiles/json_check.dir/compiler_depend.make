# Empty compiler generated dependencies file for json_check.
# This may be replaced when dependencies are built.
