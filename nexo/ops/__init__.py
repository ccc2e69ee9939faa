"""Operations: the five signals of a bad day (guarantee 13) on /ops and /metrics, and their recorder."""
