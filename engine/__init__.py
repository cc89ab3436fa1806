"""Models and mathematics behind the app, in torch. Never imports streamlit."""
