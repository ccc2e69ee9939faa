"""The warehouse's view of Nexo: the handoffs Sergio must prepare (delivered through the warehouse system)."""
