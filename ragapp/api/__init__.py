"""The JSON API (Django REST framework): thin views over the same services and selectors as the
portal pages."""
