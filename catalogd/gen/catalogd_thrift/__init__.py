__all__ = ['ttypes', 'constants', 'CatalogService']
