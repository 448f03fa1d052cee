"""Change points in a disk's results and the annotations people add: the team's Changes page and the API."""
