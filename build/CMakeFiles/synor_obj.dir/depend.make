# Empty dependencies file for synor_obj.
# This may be replaced when dependencies are built.
