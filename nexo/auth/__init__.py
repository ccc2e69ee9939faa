"""Who is using Nexo and what they may do: login, logout, roles and permissions."""
