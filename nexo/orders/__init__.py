"""CU-01 order entry: the salesperson's form, the create_order use case and the order pages."""
