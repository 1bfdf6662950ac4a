"""Global settings; per-site values live in the site_settings table."""
