"""grader: Grades scores."""
