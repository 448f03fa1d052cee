"""Prometheus and Grafana: GET /metrics for a team's token, and change points and annotations pushed to Grafana."""
