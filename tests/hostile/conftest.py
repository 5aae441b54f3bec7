"""The hostile suite runs precmon as a user would (tests/cli/conftest.py `precmon`)."""
