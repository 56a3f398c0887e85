"""Test helpers shared by unit, integration and e2e tests (fake servers, builders)."""
